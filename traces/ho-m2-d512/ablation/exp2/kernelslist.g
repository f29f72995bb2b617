kernel-56175.traceg.xz
kernel-56195.traceg.xz
kernel-56215.traceg.xz
kernel-56252.traceg.xz
kernel-56314.traceg.xz
kernel-56376.traceg.xz
