kernel-81557.traceg.xz
kernel-81577.traceg.xz
kernel-81614.traceg.xz
kernel-81676.traceg.xz
