"""Privacy-MaxEnt (Du, Teng & Zhu, SIGMOD 2008): background-knowledge risk by maximum entropy."""
