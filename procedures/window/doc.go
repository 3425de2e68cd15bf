// Package window is placeholder documentation, replaced below.
package window
