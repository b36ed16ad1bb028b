"""What the charm asks GitHub itself, and what it makes of the answers (ADR 0046).

The three checks (`runner_checks`, `scalesets`, `offline_runners`) share one prologue and
one walk over the entities (`check.GithubCheck`) and one way to call GitHub (`http`: the App
installation's token, one time budget, the REST quota kept for GARM). `dropped_verdict` and
`view` turn the scale-set check's answers into a verdict and into what operators see.
GARM's own GitHub objects (credentials, entities) are `reconcile.github_objects`'s.
"""
