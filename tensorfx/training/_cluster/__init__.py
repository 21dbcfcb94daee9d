"""The cluster: this process's role and strategy, TF_CONFIG, the job's end."""
