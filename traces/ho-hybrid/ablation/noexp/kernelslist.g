kernel-64688.traceg.xz
kernel-64732.traceg.xz
kernel-64788.traceg.xz
kernel-64891.traceg.xz
