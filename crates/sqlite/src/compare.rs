//! `txftl compare`: the synthetic workload in every mode on identical devices.
