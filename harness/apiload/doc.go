// Package apiload measures gitaso's API the way a fleet of clients loads
// it: Generate writes a state file of n resource records (a storage
// account's record with its applied body, one in 20 not ready), and Run
// sends GET requests at a constant rate (open loop, as wrk2 does) and
// reports the latency of each from the time it was due to be sent, so that
// a server that stalls is charged for every request it delayed
// (no coordinated omission), with the resident memory of the serving
// process before, during and after the load.
//
//	if err := apiload.Generate(ctx, "/tmp/gitaso.db", 10000); err != nil { ... }
//	res, err := apiload.Run(ctx, apiload.Options{
//		URL: "http://127.0.0.1:8080/api/v1/resources?limit=500", Rate: 500,
//		Duration: 30 * time.Second, PID: pid,
//	})
//	fmt.Println(res)
//
// The command in cmd/apiload wraps both for a daemon started by hand
// (docs/api.md shows the commands).
package apiload
