kernel-56700.traceg.xz
kernel-56720.traceg.xz
kernel-56757.traceg.xz
kernel-56819.traceg.xz
