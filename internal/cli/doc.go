// Package cli is gitaso's command line (cobra): serve, plan, apply,
// validate, emulator and version. cmd/gitaso/main.go only sets up signals and
// calls Run.
//
// Settings come from flags, then GITASO_<FLAG> environment variables, then a
// YAML --config file whose keys are the flag names.
package cli
