kernel-73910.traceg.xz
kernel-73954.traceg.xz
kernel-74010.traceg.xz
kernel-74113.traceg.xz
