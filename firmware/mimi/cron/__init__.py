# cron layer: jobs the agent scheduled, kept on flash and run through the inbound queue
