"""Speed: time per decision, per request, per epoch, against a baseline run beside it."""
