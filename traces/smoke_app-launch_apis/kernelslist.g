kernel-2.traceg.xz
kernel-3.traceg.xz
kernel-4.traceg.xz
kernel-5.traceg.xz
kernel-6.traceg.xz
kernel-7.traceg.xz
kernel-8.traceg.xz
