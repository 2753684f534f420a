// Package emutest starts gitaso's ARM + Entra ID emulator for tests and
// benchmarks and wires the production ARM client to it the way a user does:
// the CA written to a file, a cloud configuration file read by
// azure.LoadCloud, and a service principal's client-secret credential.
//
//	env := emutest.New(t, emutest.Roles("Owner"))
//	body, err := env.Client.Get(ctx, id, apiVersion)
package emutest
