package profile

// Fill returns what the context ctx gives a command: given holds the settings its command
// line and environment gave (a zero field: not given), and security whether either of
// them made the security choice (a certificates directory or insecure), which leaves the
// context's both unused. The result holds only the settings to fill in: the context's
// for each field given lacks (and, unless security, its security choice); a zero field
// fills nothing. A given or ctx that fails Check is an error.
func Fill(given Settings, security bool, ctx Settings) (Settings, error) {
	if security {
		ctx.CertsDir, ctx.Insecure = "", false
	}
	s, err := Resolve(given, ctx)
	if err != nil {
		return Settings{}, err
	}
	var out Settings
	if len(given.Addrs) == 0 {
		out.Addrs = s.Addrs
	}
	if given.ClusterID == "" {
		out.ClusterID = s.ClusterID
	}
	if given.User == "" {
		out.User = s.User
	}
	if given.Timeout == 0 {
		out.Timeout = s.Timeout
	}
	if !security {
		out.CertsDir, out.Insecure = s.CertsDir, s.Insecure
	}
	return out, nil
}
