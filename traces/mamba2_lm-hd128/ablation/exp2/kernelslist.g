kernel-58597.traceg.xz
kernel-58617.traceg.xz
kernel-58654.traceg.xz
kernel-58716.traceg.xz
