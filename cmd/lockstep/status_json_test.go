package main

import ()
