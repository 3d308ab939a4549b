"""CH-benCHmark (the 22 analytical queries over TPC-C data, with supplier, nation and
region) and the HTAP runner that puts TPC-C and CH-benCHmark clients on one system."""
