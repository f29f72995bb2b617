kernel-51424.traceg.xz
kernel-51444.traceg.xz
kernel-51464.traceg.xz
kernel-51502.traceg.xz
kernel-51565.traceg.xz
kernel-51628.traceg.xz
