"""The tools' front ends: the three searches and the reads that hydrate their refs, in upstream KTX's result shapes."""
