kernel-73730.traceg.xz
kernel-73774.traceg.xz
kernel-73830.traceg.xz
kernel-73933.traceg.xz
