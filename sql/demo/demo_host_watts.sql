-- Each GPU's power draw per hour as the demo wrote it (the nvidia-smi line's power.draw field, 2 decimals):
-- the sum and count of its samples, so expected.py can price an owned host's hour from its measured watts
-- exactly as the warehouse will (the mean per GPU, added over the GPUs). Reads _host_samples.
select
    hour_idx,
    gpu,
    sum(replace(split_part(line, ', ', 11), ' W', '')::decimal(12, 2))::varchar as watts_sum,
    count(*) as samples
from _host_samples
group by hour_idx, gpu
order by hour_idx, gpu
