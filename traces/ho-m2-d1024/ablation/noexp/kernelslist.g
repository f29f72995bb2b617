kernel-51907.traceg.xz
kernel-51927.traceg.xz
kernel-51964.traceg.xz
kernel-52026.traceg.xz
