// Package autoplan plans every open pull request of a forge from inside
// the daemon (gitaso serve --autoplan), as Atlantis does: each pull
// request's head (or the forge's test merge of it) is planned as "what would
// happen if this merged now", against the state of the applied revision and
// live Azure, with a read-only Azure client (azure.ReadOnly), and the plan
// is posted as the pull request's sticky comment with a commit status.
// A plan never writes to Azure nor to the applied state; merging still
// applies through the branch the daemon follows.
//
// A pull request is planned again when its head moves, when the applied
// revision changes (the base moved under it), or when a webhook asks; the
// comments of pull requests that closed are marked outdated.
//
//	a := autoplan.New(autoplan.Config{Forge: f, Source: prSource, Plan: planPR, Comment: render})
//	go a.Run(ctx)       // every Config.Interval
//	a.Trigger()         // a pull-request webhook arrived
package autoplan
