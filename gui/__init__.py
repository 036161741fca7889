"""Qt view of the app: renders engine results and sends commands; holds no mathematics."""
