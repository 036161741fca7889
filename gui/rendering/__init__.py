"""What the views draw with, not views themselves: 3D views rendered off screen into framebuffers
(``offscreen_gl``, ``gl_cells``), their cameras (``camera``), and the plots' shared style
(``plot_style``)."""
