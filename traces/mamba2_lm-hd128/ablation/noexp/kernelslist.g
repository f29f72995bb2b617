kernel-58457.traceg.xz
kernel-58477.traceg.xz
kernel-58514.traceg.xz
kernel-58576.traceg.xz
