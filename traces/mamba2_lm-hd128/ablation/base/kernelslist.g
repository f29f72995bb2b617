kernel-55532.traceg.xz
kernel-55552.traceg.xz
kernel-55589.traceg.xz
kernel-55651.traceg.xz
