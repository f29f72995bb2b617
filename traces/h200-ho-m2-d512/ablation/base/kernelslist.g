kernel-52221.traceg.xz
kernel-52241.traceg.xz
kernel-52261.traceg.xz
kernel-52299.traceg.xz
kernel-52362.traceg.xz
kernel-52425.traceg.xz
