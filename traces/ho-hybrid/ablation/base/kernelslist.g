kernel-63713.traceg.xz
kernel-63757.traceg.xz
kernel-63813.traceg.xz
kernel-63916.traceg.xz
