"""Looking at a loss surface: slices, planes and paths through θ, and the Hessian at any size."""
