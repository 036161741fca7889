"""Paper A, *Topological obstruction to the training of shallow ReLU neural networks*.

Two-layer homogeneous networks, the conserved c_k and the topology of H(c), the quadrics' meshes,
training with trajectories, the obstruction probability and the experiments (docs/MATH.md, part A).
"""
