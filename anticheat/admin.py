"""Anti-cheat and moderation (contract section 8): rules that reject or hold suspicious
results, the review queue, void-and-rewrite and the audit log. Not built yet: every result is
accepted as submitted (see the open moderation issue)."""
