package profile

// Amdahl is the factor by which a data-parallel job's epoch time changes when it runs on to
// workers instead of from: serial + (1 - serial) x from / to, Amdahl's law with serial the
// fraction of the epoch that does not parallelize (the a of the fit t(G) = a + b/G relative
// to t at from). The policy assumes it where a model's fit is not trusted; the simulator and
// the testbed agent run it as their physics (testbed/physics).
func Amdahl(serial float64, from, to int32) float64 {
	return serial + (1-serial)*float64(from)/float64(to)
}
