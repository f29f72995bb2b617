kernel-86367.traceg.xz
kernel-86387.traceg.xz
kernel-86424.traceg.xz
kernel-86486.traceg.xz
