from labeldp_sim.app import main

main()
