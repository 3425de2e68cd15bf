package main
import ("errors"; "github.com/urfave/cli/v2")
func runDemo(c *cli.Context) error { return errors.New("demo: not yet built") }
