// The Argo CD roles the test world runs, in one binary that dispatches on the name it is
// run under (as Argo CD's own cmd/main.go does): the application controller, the repo
// server and the git askpass helper the repo server hands to git. It leaves out the CLI,
// the API server, Dex, notifications, the ApplicationSet and commit servers and their SCM
// and SSO clients, which the tests never start; testworld/argocd.py says what that saves.
// Built inside a writable copy of the argo-cd/v3 module (testworld/argocd.py).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	appcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
	gitaskpass "github.com/argoproj/argo-cd/v3/cmd/argocd-git-ask-pass/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
	"github.com/argoproj/argo-cd/v3/util/log"
)

func init() {
	klog.SetLogger(log.NewLogrusLogger(log.NewWithCurrentConfig()))
}

func main() {
	name := filepath.Base(os.Args[0])
	if val := os.Getenv("ARGOCD_BINARY_NAME"); val != "" {
		name = val
	}
	var command *cobra.Command
	switch name {
	case "argocd-application-controller":
		command = appcontroller.NewCommand()
	case "argocd-repo-server":
		command = reposerver.NewCommand()
	case "argocd-git-ask-pass":
		command = gitaskpass.NewCommand()
	default:
		fmt.Println("trainforge's test-world Argo CD: run it as argocd-application-controller, " +
			"argocd-repo-server or argocd-git-ask-pass (a symlink or ARGOCD_BINARY_NAME)")
		if len(os.Args) > 1 && (os.Args[1] == "--help" || os.Args[1] == "-h") {
			os.Exit(0)
		}
		os.Exit(2)
	}
	if err := command.Execute(); err != nil {
		os.Exit(1)
	}
}
