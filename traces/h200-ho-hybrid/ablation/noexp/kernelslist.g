kernel-72087.traceg.xz
kernel-72131.traceg.xz
kernel-72187.traceg.xz
kernel-72290.traceg.xz
