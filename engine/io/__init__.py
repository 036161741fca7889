"""Networks in and out: the app's .npz, PyTorch state_dicts and torch.export archives."""
