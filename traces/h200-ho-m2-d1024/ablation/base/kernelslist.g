kernel-85533.traceg.xz
kernel-85553.traceg.xz
kernel-85590.traceg.xz
kernel-85652.traceg.xz
