kernel-49027.traceg.xz
kernel-49047.traceg.xz
kernel-49067.traceg.xz
kernel-49105.traceg.xz
kernel-49168.traceg.xz
kernel-49231.traceg.xz
