DELETE FROM jobd_leaders WHERE name = :name AND node = :node
