kernel-50226.traceg.xz
kernel-50246.traceg.xz
kernel-50266.traceg.xz
kernel-50303.traceg.xz
kernel-50365.traceg.xz
kernel-50427.traceg.xz
