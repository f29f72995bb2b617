kernel-35636.traceg.xz
kernel-35643.traceg.xz
