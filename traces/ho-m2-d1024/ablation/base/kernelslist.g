kernel-52863.traceg.xz
kernel-52883.traceg.xz
kernel-52920.traceg.xz
kernel-52982.traceg.xz
