"""Talk clips: a composition (layout), key frames and timing that, with a finished run,
determine every frame (docs/ARCHITECTURE.md, "Clips as pure functions").

model      the clip as data: JSON schema, validation, the default story per preset
timeline   key-frame interpolation with easing, slow motion around events
scene      what a workspace offers a clip: 3D views, plots, panels, per-step facts
compositor lays the sources out at the clip's size and paints title and caption
render     the frame loop: headless (a plain loop) or in the GUI (one frame per timer tick)
dock       the key-frame editor
"""
