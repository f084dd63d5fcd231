"""Scale: many models, high feedback rates, several processes: staleness, memory, stalls."""
