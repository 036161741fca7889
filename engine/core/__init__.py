"""What both papers' code shares: errors, the job protocol, numeric settings, data sets, exports."""
