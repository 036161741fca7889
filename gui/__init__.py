"""Qt view of the app: renders engine results and sends commands; holds no mathematics."""

import OpenGL

# PyOpenGL calls glGetError after every GL call unless told not to, before OpenGL.GL is first
# imported: about a quarter of the Python in a 3D view's render. A broken
# render still shows: the tests check the views' pixels.
OpenGL.ERROR_CHECKING = False
