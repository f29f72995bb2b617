kernel-35621.traceg.xz
kernel-35622.traceg.xz
kernel-35624.traceg.xz
kernel-35637.traceg.xz
