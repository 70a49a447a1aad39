"""The dashboard's tabs: queries, detail, checkpoint, landing, events, results."""
