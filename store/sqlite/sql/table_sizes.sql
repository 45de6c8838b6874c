-- The page size, the pages in the file and the pages on its free list.
SELECT (SELECT page_size FROM pragma_page_size),
       (SELECT page_count FROM pragma_page_count),
       (SELECT freelist_count FROM pragma_freelist_count);
