kernel-58910.traceg.xz
kernel-58930.traceg.xz
kernel-58950.traceg.xz
kernel-58987.traceg.xz
kernel-59049.traceg.xz
kernel-59111.traceg.xz
