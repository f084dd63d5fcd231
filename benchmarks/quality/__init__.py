"""Quality: how well a learner decides (loss, reward, accuracy) against a baseline run beside it."""
