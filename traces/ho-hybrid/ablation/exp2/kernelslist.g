kernel-59642.traceg.xz
kernel-59686.traceg.xz
kernel-59742.traceg.xz
kernel-59845.traceg.xz
