SELECT name, paused FROM jobd_queues
