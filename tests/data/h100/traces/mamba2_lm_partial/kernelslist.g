kernel-25248.traceg.xz
kernel-25249.traceg.xz
kernel-25254.traceg.xz
